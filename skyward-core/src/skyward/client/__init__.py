"""The client side: Compute, Session, the Pool facade, its scheduler and node handles."""
