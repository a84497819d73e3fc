"""Stage ``frontiers``: sides and the comparisons that pair them (``sides``), the Pareto rule (``pareto``), the
frontier points of every side (``points``) and the monotone spline along a frontier (``spline``)."""
