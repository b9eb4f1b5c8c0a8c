"""A private PostgreSQL server with pgvector for the tests (the session's ``pg`` fixture is one)."""

from __future__ import annotations


class PgServer:
    """A private PostgreSQL server (the ``pgserver`` package: PostgreSQL 16 with pgvector) in a temporary directory.

    ``url(tenant)`` is a store location in it. ``admin()`` is a connection
    as the superuser that owns everything. ``stop()`` and ``start()`` take
    the server down and bring it back on the same socket, for the tests of a
    server that goes away mid-session.
    """

    def __init__(self, root):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
            import pgserver

            self.server = pgserver.get_server(root, cleanup_mode="delete")
        self.base = self.server.get_uri()
        with self.admin() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def url(self, tenant: str | None = None) -> str:
        return self.base + (f"&tenant={tenant}" if tenant else "")

    def admin(self):
        import psycopg

        return psycopg.connect(self.base, autocommit=True)

    def stop(self) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        from pgserver._commands import pg_ctl

        info = self.server.get_postmaster_info()
        pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {info.socket_dir}", "-l", str(self.server.log), "start"],
               pgdata=self.server.pgdata, user=self.server.system_user, timeout=30)

    def close(self) -> None:
        self.server.cleanup()
