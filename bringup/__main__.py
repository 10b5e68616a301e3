from bringup.cli.main import main

main()
