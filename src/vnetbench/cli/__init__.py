"""The command line: parsing, dispatch and each command's own module."""
