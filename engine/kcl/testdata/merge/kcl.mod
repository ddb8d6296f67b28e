[package]
name = "merge"
version = "0.1.0"

[profile]
entries = ["base/base.k", "main.k"]
