"""The App's own tables and the queries on them; imports only core/."""
