[package]
name = "mysql"
version = "0.2.0"
