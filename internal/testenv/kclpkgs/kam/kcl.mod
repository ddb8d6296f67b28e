[package]
name = "kam"
version = "0.2.0"
