"""The smallest server: a name, a version and instructions for the model."""

from mcpactor import Server

server = Server("notes", version="1.0.0", instructions="Keeps short notes.")
