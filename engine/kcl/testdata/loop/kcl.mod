[package]
name = "loop"
version = "0.1.0"
