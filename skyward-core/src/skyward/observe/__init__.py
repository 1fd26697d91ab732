"""What a pool tells about itself: its events (`events`), the console that draws them
(`console`), and the structured logs (`logging`)."""
