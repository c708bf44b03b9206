"""The App's decisions, pure: events and facts in, actions out; no job/, github/, store/."""
