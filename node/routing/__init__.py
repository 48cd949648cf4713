"""Mount table and router: which backend owns which path prefix."""
