from evalcore.cli.main import run

run()
