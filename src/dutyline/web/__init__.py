"""The web console: people sign in with an e-mail and a password and work through pages that
call the same services the API does (docs/console.md)."""
