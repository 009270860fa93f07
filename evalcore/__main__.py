from evalcore.cli.main import main

main()
