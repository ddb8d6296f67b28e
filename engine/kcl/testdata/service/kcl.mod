[package]
name = "service"
version = "0.1.0"
