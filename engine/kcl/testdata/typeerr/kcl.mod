[package]
name = "typeerr"
version = "0.1.0"
