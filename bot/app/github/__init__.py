"""GitHub and the regression webhook, thin shells over the network; import only core/."""
