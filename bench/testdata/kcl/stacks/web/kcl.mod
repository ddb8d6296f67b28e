[package]
name = "web"
version = "0.1.0"
