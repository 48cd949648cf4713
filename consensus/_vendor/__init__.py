"""Third-party code owned by consensus (see consensus/DESIGN.md, "The vendored engine")."""
