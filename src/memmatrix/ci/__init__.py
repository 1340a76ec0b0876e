"""memmatrix.ci"""
