"""Integrations with web frameworks. They depend on the core; nothing in the core imports them."""
