"""WSGI entry point: `gunicorn app:app`. The app object is built lazily per worker (see pipeline.service.app)."""
from pipeline.service.app import create_app

app = create_app()
