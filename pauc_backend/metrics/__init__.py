"""Evaluation metrics (numpy only): EER, minDCF, pAUC, AUC, AP, actDCF, Cllr, DET/ROC points."""
