"""`python -m svmtrain` runs the svmtrain command (useful where the console script is not on PATH)."""

from svmtrain.cli import main

if __name__ == "__main__":
    main(prog_name="svmtrain")
