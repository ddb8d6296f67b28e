[package]
name = "worker"
version = "0.1.0"
