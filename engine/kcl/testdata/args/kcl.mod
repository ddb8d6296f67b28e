[package]
name = "args"
version = "0.1.0"
