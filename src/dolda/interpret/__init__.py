"""What a fitted model says: explanations, topic labels, coherence, the HTML
report (``report/``).
"""
