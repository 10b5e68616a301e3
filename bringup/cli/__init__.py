"""The `bringup` command line (click). The root group is `bringup.cli.main:main`; this package
imports nothing itself, so `burnin` can take the shared pieces from `bringup.cli.common` without
loading every `bringup` command."""
