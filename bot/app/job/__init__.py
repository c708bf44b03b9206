"""The shell of a job: gathers facts, carries out actions, holds leases; decides nothing."""
