"""The web pages: the dashboard and the buy page, with their templates and styles."""
