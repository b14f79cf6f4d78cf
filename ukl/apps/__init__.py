"""Real applications from Debian source packages, built with ukl-cc."""
