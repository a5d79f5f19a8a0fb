"""Route modules. Every module here that defines `add_routes(app)` is mounted by create_app()."""
