"""Models (numpy only, no files): LDA, PLDA, PaucMetric/TripletMetric, calibration."""
