[package]
name = "api"
version = "0.1.0"
