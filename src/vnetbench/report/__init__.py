"""The report: headline tables, figures (inline SVG), the HTML page and the terminal summary."""
