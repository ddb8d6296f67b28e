[package]
name = "app"
version = "0.1.0"
