[package]
name = "check"
version = "0.1.0"
