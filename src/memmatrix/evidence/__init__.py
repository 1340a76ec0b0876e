"""memmatrix.evidence"""
