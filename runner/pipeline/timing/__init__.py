"""The timing pass: process pairs, their schedule, evidence and entries; imports machine/."""
