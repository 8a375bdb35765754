"""Pictures of a trained model: attention heatmaps (PNG) and an HTML page to browse them."""
