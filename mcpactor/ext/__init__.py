"""Extensions of the protocol that mcpactor ships: each is a module of its own."""
