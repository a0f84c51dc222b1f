"""Who is calling: Supabase JWTs verified, the user or the service they name."""
