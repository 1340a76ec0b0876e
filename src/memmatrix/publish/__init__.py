"""memmatrix.publish"""
