//! PostgreSQL side by side (being written).
