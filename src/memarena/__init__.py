"""memarena: reproduce, compare and extend long-term memory methods for LLM agents."""

__version__ = "0.1.0"
