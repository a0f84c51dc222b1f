"""The local stack: embedded Postgres, migrations, demo data, functions, realtime."""
