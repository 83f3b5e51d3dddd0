"""svmtools: companions of svmtrain for data files (check, scale, split, CoNLL and CoNLL-U
conversion), plots of traces and C paths, and the documentation (man pages)."""
