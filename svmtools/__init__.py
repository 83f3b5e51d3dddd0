"""svmtools: companions of svmtrain for data files (check) and the documentation (man pages)."""
