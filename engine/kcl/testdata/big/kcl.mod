[package]
name = "big"
version = "0.1.0"
