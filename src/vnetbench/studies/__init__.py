"""The seed studies: one pack per study, their verdict rules, reproduction and judgement."""
