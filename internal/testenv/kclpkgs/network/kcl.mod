[package]
name = "network"
version = "0.2.0"
