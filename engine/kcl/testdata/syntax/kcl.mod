[package]
name = "syntax"
version = "0.1.0"
