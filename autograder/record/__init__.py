"""Recording and reporting: nbgrader's gradebook, the feedback pages, the class report."""
