[package]
name = "nones"
version = "0.1.0"
