"""In service: the health check Slurm runs on every node (`burnin health`) and the controller's
`burnin sync` that carries Slurm's drains into the fleet store (docs/in-service.md)."""
